"""Time ``recommend()`` of one source tree: the in-process rate, printed as JSON (run by benchmarks/recommend.py).

    python benchmarks/bench_recommend_rate.py <source root> < profiles.json

The input is ``{"warm": [profile, ...], "profiles": [profile, ...]}`` (or a bare list, warmed on itself): one pass over
the warm-up profiles, then the timed pass over the others, which the process has not seen; the framework keeps what
it works out per option and alternative, so timing profiles it already answered would time those memos, not the work
a new profile costs. The source root is the project's own tree or an older commit's ``gpucore`` extracted by
``git archive``: the same profiles, the built-in catalog and the default SLA tiers in both, in a fresh process each,
so the two rates of one run differ by the code alone. Only ``gpucore`` is imported (pure: no Django), from the root
given. The rate is per second of this process's CPU time: on a machine shared with other work, wall time would
mostly measure the others.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    import gpucore.decision
    from gpucore.decision import (  # the tree given, not necessarily this file's
        BUILTIN_CATALOG,
        DEFAULT_TIERS_BY_SLUG,
        ProfileError,
        WorkloadProfile,
        recommend,
    )

    given = json.load(sys.stdin)
    warm, profiles = (given, given) if isinstance(given, list) else (given["warm"], given["profiles"])

    def one_pass(profiles: list[dict[str, object]]) -> tuple[float, int]:
        refused = 0
        start = time.process_time()
        for data in profiles:
            try:
                recommend(WorkloadProfile.from_mapping(data), BUILTIN_CATALOG, tiers=DEFAULT_TIERS_BY_SLUG).to_dict()
            except ProfileError:
                refused += 1
        return len(profiles) / (time.process_time() - start), refused

    one_pass(warm)  # warm: imports, regular expressions, the interpreter's specialisation, the framework's memos
    rate, refused = one_pass(profiles)
    print(json.dumps({"rate": rate, "refused": refused, "source": gpucore.decision.__file__}))


if __name__ == "__main__":
    main()
