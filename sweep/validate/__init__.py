"""Check the model against published measurements: the table, the evaluator, scores, reports, and
the calibration of efficiency parameters (``sweep validate``, ``sweep calibrate``)."""

from sweep.validate.evaluator import Evaluator, compare
from sweep.validate.measurements import (
    MEASUREMENTS_CSV,
    SKIP_NO_FIT,
    file_sha256,
    read_measurements,
    usable_mask,
)
from sweep.validate.report import (
    TARGETS,
    aggregate,
    fmt_error,
    parity_plot,
    records,
    report_json,
    report_text,
    rows_text,
    served_load,
    skip_reasons,
    summarize,
)
from sweep.validate.scores import (
    mean_abs_log_error,
    median_abs_rel_error,
    median_log_error,
    median_rel_error,
    spearman,
)

__all__ = ["MEASUREMENTS_CSV", "SKIP_NO_FIT", "TARGETS", "Evaluator", "aggregate", "compare",
           "file_sha256", "fmt_error", "mean_abs_log_error", "median_abs_rel_error",
           "median_log_error", "median_rel_error", "parity_plot", "read_measurements", "records",
           "report_json", "report_text", "rows_text", "served_load", "skip_reasons", "spearman",
           "summarize",
           "usable_mask"]
