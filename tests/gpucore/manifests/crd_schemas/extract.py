"""Extract the ``openAPIV3Schema`` of one served version of a CRD YAML into ``<kind>.<version>.json`` here.

Run from the repository root with a CRD file from its upstream repository (README.md names them)::

    python tests/gpucore/manifests/crd_schemas/extract.py PATH/TO/jobset.x-k8s.io_jobsets.yaml v1alpha2

The files are kept in git (README.md says the commit they came from); the tests never fetch anything.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


def main(crd_file: str, version: str) -> None:
    """Write the schema of ``version`` of the CRD in ``crd_file`` and print its file name and the CRD's sha256."""
    path = Path(crd_file)
    raw = path.read_bytes()
    crd = next(doc for doc in yaml.safe_load_all(raw) if doc and doc.get("kind") == "CustomResourceDefinition")
    kind = crd["spec"]["names"]["kind"]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")]
    schema = served["schema"]["openAPIV3Schema"]
    schema["$comment"] = f"{crd['spec']['group']}/{version} {kind}, from {path.name}"
    target = HERE / f"{kind.lower()}.{version}.json"
    target.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(target.name, hashlib.sha256(raw).hexdigest())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
