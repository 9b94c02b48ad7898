"""Analysis of result Datasets: variation, winners and frontiers, Pareto fronts, regimes,
strategies, plots."""
