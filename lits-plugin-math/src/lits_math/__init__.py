"""Math for LiTS: importing this module registers the datasets, the RAP components, the PRMs and
GSM8K's prompts."""

from lits_math import data  # noqa: F401  (registers gsm8k and math500)
from lits_math import rap  # noqa: F401  (the RAP components, prompts and the "rap" search framework)
from lits_math import prm  # noqa: F401  (prm-logprob, prm-verifier, prm-consistency reward models)
from lits_math import prm_classifier  # noqa: F401  (prm-classifier: a PRM behind vLLM's Pooling API)
from lits_math import prompts  # noqa: F401  (GSM8K's ask for a whole solution)
