"""Fleet mode's decisions, pure: which opted-in workloads need a calibration, and the Job that
measures each one in its own pod shape.

A Deployment or StatefulSet opts in with the label ``tf-thread-advisor.io/calibrate: "true"`` and
says what to measure in annotations (``optin``). ``derive`` turns its pod template into the
calibration Job, from its parts: ``serving_shape`` (the quota, resources and nodes it copies of the
serving pod), ``model_copy`` (where the model is: the annotation's path, else the one a TF Serving
container names, read by ``tf_serving``; and the init container that copies it out of the serving
image),
``advisor_pod`` (the advisor container, its volumes and the Job-level settings) and ``naming`` (the
Job's labels, annotations, name and hashes); ``errors`` holds the DeriveError they raise.
``jobs`` reads back the Jobs it made; ``decide`` compares a workload's advice with its Job and
with the Jobs already there. Nothing here talks to a cluster: the pipeline lists the objects
(``advisor.cluster``), reads each once into its view (``advisor.models.kube``: the workload, its
pod spec and containers, the Jobs) and hands the views in, as it does to ``consumers`` for
``status``; nothing here reads a view again from a dict. May import consumers, recommend, models,
objectives and errors.
"""
