"""Training and HPC with no model named are placed by cost per unit of work (dense FP16/BF16 throughput for
training, FP64 for HPC), not by the cheapest GPU-hour. Expected figures are hand arithmetic on the catalog's list
prices and NVIDIA's datasheet throughputs."""

from decimal import Decimal

from tests.gpucore.decision.cases import D, rec, text


def test_a_2_x_8_hpc_simulation_is_not_placed_on_sixteen_t4s():
    result = rec(workload_type="hpc_simulation", gpu_memory_gb=80, gpu_count=8, replicas=2)
    # FP64: T4 0.526 / 0.25 TFLOPS = 2.10 per TFLOPS-hour; H100 6.88 / 67 = 0.103; H200 7.912 / 67 = 0.118.
    assert (result.gpu_model, result.strategy, result.quantity) == ("H100-80GB", D, 8)
    assert "costs the least per unit of work" in text(result)
    assert "102.69 USD per PFLOPS-hour of FP64 throughput" in text(result)  # 6.88 x 16 / (67 x 16) x 1000
    [t4] = [a for a in result.alternatives if a.gpu_model == "T4"]
    assert "Per unit of work (FP64 throughput): 2,104.00 USD per PFLOPS-hour, 20.49 x the chosen H100-80GB's." in (
        t4.tradeoffs
    )


def test_training_goes_to_the_cheapest_work_not_the_cheapest_hour():
    # Dense FP16: T4 0.526 / 65 = 8.09, L4 0.8048 / 121 = 6.65, H100 6.88 / 989 = 6.96 USD per PFLOPS-hour.
    result = rec(workload_type="training", gpu_memory_gb=10)
    assert result.gpu_model == "L4"
    rates = {"L4": Decimal("2"), "T4": Decimal("0.50")}  # L4 at 16.53 per PFLOPS-hour: H100 does the work cheaper
    assert rec(options={"rates": rates}, workload_type="training", gpu_memory_gb=10).gpu_model == "H100-80GB"


def test_inference_still_goes_to_the_cheapest_hour():
    assert rec(workload_type="batch_inference", gpu_memory_gb=10, isolation_required=True).gpu_model != "H100-80GB"
