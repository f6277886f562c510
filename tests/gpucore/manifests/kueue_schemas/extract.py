"""Extract the ``openAPIV3Schema`` of one served version from Kueue's CRD YAMLs into ``<kind>.json`` files here.

Run from the repository root with a kueue checkout's ``config/components/crd/bases/`` directory::

    python tests/gpucore/manifests/kueue_schemas/extract.py PATH/TO/kueue/config/components/crd/bases v1beta2

The files are kept in git (see README.md for the commit they came from); the tests never fetch anything.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
KINDS = ("ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass", "Cohort", "Topology")


def main(crd_dir: str, version: str) -> None:
    """Write one JSON schema per kind in KINDS, for ``version``."""
    for path in sorted(Path(crd_dir).glob("kueue.x-k8s.io_*.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        kind = crd["spec"]["names"]["kind"]
        if kind not in KINDS:
            continue
        (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")]
        schema = served["schema"]["openAPIV3Schema"]
        schema["$comment"] = f"{crd['spec']['group']}/{version} {kind}, from {path.name}"
        target = HERE / f"{kind.lower()}.{version}.json"
        target.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(target.name)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "v1beta2")
