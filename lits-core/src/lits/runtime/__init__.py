"""What running code leans on: fan-outs and their round clock (:mod:`.concurrency`), the inference log
of every model call (:mod:`.observability`) and optional packages imported where they are used
(:mod:`.extras`).
"""
