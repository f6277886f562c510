"""The inventory sync task: every Kubernetes cluster, or just the one asked for; one failure skips only its cluster."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from allocations.clusters.tasks import sync_inventory
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db

NOTHING_LISTENS = "http://127.0.0.1:9"  # the discard port: connection refused at once on loopback


def test_one_cluster_or_all_and_failures_are_reported_per_cluster() -> None:
    first = ClusterFactory(name="alpha", backend="kubernetes", api_endpoint=NOTHING_LISTENS)
    ClusterFactory(name="beta", backend="kubernetes", api_endpoint=NOTHING_LISTENS)
    ClusterFactory(name="tree", backend="gitops")  # no nodes to read

    only_first = sync_inventory(first.pk)
    assert set(only_first) == {"alpha"}
    assert only_first["alpha"].startswith("error:")

    assert set(sync_inventory()) == {"alpha", "beta"}


@pytest.fixture
def not_kubernetes() -> Iterator[str]:
    """A server on loopback that answers every request 200 with a web page, as a wrong endpoint would."""

    class WebPage(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html><body>Welcome to nginx!</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), WebPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_cluster_answering_with_a_web_page_is_an_error_on_it_alone(not_kubernetes: str) -> None:
    wrong = ClusterFactory(name="alpha", backend="kubernetes", api_endpoint=not_kubernetes)
    down = ClusterFactory(name="beta", backend="kubernetes", api_endpoint=NOTHING_LISTENS)

    results = sync_inventory()

    assert results["alpha"].startswith("error:") and "did not answer as a Kubernetes API server" in results["alpha"]
    assert results["beta"].startswith("error:")  # the cluster after it was still tried
    wrong.refresh_from_db()
    down.refresh_from_db()
    assert "did not answer as a Kubernetes API server" in wrong.inventory_error
    assert down.inventory_error
