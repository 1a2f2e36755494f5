"""The parts of one job that :mod:`mcu_exp.pipeline` orchestrates: alignment against the human
and reference labels (:mod:`.alignment`), the decision-free measure table and PRR
(:mod:`.measures`), the metrics, tags and tables recorded in MLflow (:mod:`.record`) and what
the job prints (:mod:`.screen`)."""
