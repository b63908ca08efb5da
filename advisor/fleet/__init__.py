"""Fleet mode's decisions, pure: which opted-in workloads need a calibration, and the Job that
measures each one in its own pod shape.

A Deployment or StatefulSet opts in with the label ``tf-thread-advisor.io/calibrate: "true"`` and
says what to measure in annotations (``optin``). ``derive`` turns its pod template into the
calibration Job; ``decide`` compares its advice with it and with the Jobs already there. Nothing
here talks to a cluster: the pipeline lists the objects (``advisor.cluster``) and hands them in, as
``consumers`` does for ``status``. May import consumers, recommend, models, objectives and errors.
"""
