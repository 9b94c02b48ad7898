"""The seeds study: the seed papers' claims recomputed by the model.

``python -m scripts.seeds [--quick] [--out-dir DIR] [--validation FILE]`` evaluates two grids
(:mod:`scripts.seeds.spec`) and writes docs/seeds_study.md, docs/figures/seeds_*.png and the
seed 004 block of docs/validation.md. One module per section of the report, each using the
product's analyses (``ds.sweep.max_variation``, ``variation``, ``best_layout``, ``goodput``,
``regimes``, ``strategies``) on stated comparison bases; the package holds
only what is specific to the seeds: their numbers (:mod:`~scripts.seeds.claims`,
:mod:`~scripts.seeds.seed004_rows`), the tables and the verdicts.

1. :mod:`~scripts.seeds.variation`: "up to 3.7x" on four comparison bases;
2. :mod:`~scripts.seeds.regimes`: Fig. 8's regimes, per device and per kW;
3. :mod:`~scripts.seeds.strategies`: expert versus tensor parallelism;
4. :mod:`~scripts.seeds.dataflow`, :mod:`~scripts.seeds.quantization`,
   :mod:`~scripts.seeds.scaling`, :mod:`~scripts.seeds.moe`: seed 004's findings 4a-4f;
5. :mod:`~scripts.seeds.seed004`: seed 004's measured numbers against the model;
6. :mod:`~scripts.seeds.tables`: seed 002 Tables III and IV;
7. :mod:`~scripts.seeds.uncertainty`: the estimates the claims rest on.
"""
