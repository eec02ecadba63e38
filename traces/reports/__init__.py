"""Reports over traces: statistics, differential runs, verdict text, the catalogue and trace mutants."""
