"""An A/B harness: every command's output, in every format, of one checkout's advisor against
another's, over the same scenes, byte for byte (issue 41: a refactor keeps every output).

    python -m testkit.outputs_ab --base /work/wt-base --branch /work/wt-X   # exit 1 if any differ
    python -m testkit.outputs_ab --list                                     # the commands only
    python -m testkit.outputs_ab --base A --branch B --only '^status'       # a subset, by regex

Each command runs as ``python -m advisor ...`` in a child process with PYTHONPATH at one checkout
(side.py), against the strict fake API server and the Prometheus stand-in holding one scene
(scene.py: the benchmark's fleet, fleet mode's cases, status's consumers, production verdicts),
built once in this process; a command that writes gets a fresh, identical scene per side and
the objects it leaves are compared too (harness.py). One line per command: ``same`` or ``DIFF``,
the base's exit code and stdout size, the command; under a DIFF the first 30 lines of a unified
diff of what differs. Exit 0: all the same; 1: some differ; 2: none differ, but on the base's
side a command exited otherwise than the scene is built for (``SCENE`` lines: a status that
cannot list because of a missing rule would compare two empty outputs and prove nothing).

The same on both sides, so that only the code differs: the wall clock (``datetime.now`` is
frozen at the scene's time; the fake server stamps objects with it), the environment, the ids
the fake server draws. Taken out before comparing (compare.py), as it varies between runs: the
log's timestamps (text and JSON), fake servers' ports and scene folders. Nothing else: a
duration printed would be a difference (comparing a checkout with itself gives 0 differences).
"""
