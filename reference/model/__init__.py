"""The shared model: what every kssim package may import from ``reference``.

Scenario and topology model and loader (:mod:`.scenario`, :mod:`.topology`), release profiles
(:mod:`.profiles`), records and run results (:mod:`.records`), serialized keys (:mod:`.keys`),
drop and failure codes (:mod:`.codes`), record files (:mod:`.record_files`), output comparison
(:mod:`.compare`), named joiners (:mod:`.joiners`), rendering (:mod:`.render`), errors
(:mod:`.errors`) and the engine table (:mod:`.engines`: engines by name, imported only when run).
It models data and contracts, never an operator's processing: the reference engine
(``reference.runtime``, ``.stores``, ``.joins``) and the Spark backend are two independent
implementations of the rules the profiles name. ``tests/model/test_boundaries.py`` enforces that
no other package reaches past this package into the reference engine.
"""
