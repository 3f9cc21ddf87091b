"""Judge-versus-human agreement (`groundwire calibrate`): does the judge agree with *you*?

```python
from groundwire.calibrate import calibrate, read_labels, read_scores

labels = read_labels("labels.csv")
report = calibrate(labels, {None: read_scores("scores.jsonl")})
for row in report.agreements:
    print(row.evaluator, row.prompt, row.n, row.kappa)
```

Labels (CSV, JSON lines or parquet: `trace_id`/`span_id`, `evaluator`, `label`, `annotator`) are
joined with scored turns by span or trace id; every figure (accuracy, Cohen's kappa, quadratic-
weighted for 0/1/2 labels, Spearman, Pearson) comes with a 95% bootstrap interval, binary labels
get the best pass threshold, and the disagreements are listed worst first. Needs SciPy for
Spearman (`pip install 'groundwire[calibrate]'`). See docs/calibrate.md.
"""

from __future__ import annotations

from groundwire.calibrate._agreement import (
    CATEGORIES,
    Agreement,
    Disagreement,
    Figure,
    Pair,
    Threshold,
    agreement,
    on_scale,
)
from groundwire.calibrate._calibrate import MEAN_PROMPT, CalibrationReport, Ceiling, calibrate
from groundwire.calibrate._labels import (
    LABEL_COLUMNS,
    Label,
    LabelsError,
    LabelSet,
    Scale,
    parse_label,
    read_labels,
)
from groundwire.calibrate._report import (
    REPORT_SUFFIXES,
    report_dict,
    series_name,
    show,
    show_threshold,
    write_report,
)
from groundwire.calibrate._scores import (
    Match,
    ScoredTurn,
    Unmatched,
    join,
    read_scores,
    scored_turns,
)
from groundwire.calibrate._stats import (
    RESAMPLES,
    accuracy,
    best_thresholds,
    bootstrap_interval,
    cohen_kappa,
    confusion,
    pearson,
    resample_indices,
    spearman,
)
from groundwire.calibrate._traces import Scored, TracesRead, read_turns, score_turns

__all__ = [
    "CATEGORIES",
    "LABEL_COLUMNS",
    "MEAN_PROMPT",
    "REPORT_SUFFIXES",
    "RESAMPLES",
    "Agreement",
    "CalibrationReport",
    "Ceiling",
    "Disagreement",
    "Figure",
    "Label",
    "LabelSet",
    "LabelsError",
    "Match",
    "Pair",
    "Scale",
    "Scored",
    "ScoredTurn",
    "Threshold",
    "TracesRead",
    "Unmatched",
    "accuracy",
    "agreement",
    "best_thresholds",
    "bootstrap_interval",
    "calibrate",
    "cohen_kappa",
    "confusion",
    "join",
    "on_scale",
    "parse_label",
    "pearson",
    "read_labels",
    "read_scores",
    "read_turns",
    "report_dict",
    "resample_indices",
    "score_turns",
    "scored_turns",
    "series_name",
    "show",
    "show_threshold",
    "spearman",
    "write_report",
]
