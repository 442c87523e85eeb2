"""Upload a folder of chapters: checked, priced, resumable, summed up.

```python
plan = tk.batch.plan_upload(client, "scans/", project="Moonlit Harbor")
print(plan.headline())           # Send 12 chapters, 240 pages (31.2 MB) to ...: about 480 credits
plan.problems                    # bad files and clashes, listed before anything is sent
summary = tk.batch.upload(client, plan, on_progress=print)
print(summary.headline())
```

The `toolkit upload` command and the UploadPanel's "Upload a folder" tab are thin
layers over these functions. What a folder may hold is in `folder`; how a rerun knows
what is already there in `plan` and `record`; how chapters are sent in `send`.
"""

from __future__ import annotations

from toolkit.batch.folder import FolderChapter, FolderScan, Problem, natural_key, scan_folder
from toolkit.batch.plan import PlannedChapter, UploadPlan, find_project, plan_upload
from toolkit.batch.record import RECORD_NAME
from toolkit.batch.send import (
    ChapterOutcome,
    Progress,
    UploadInterrupted,
    UploadSummary,
    upload,
)

__all__ = [
    "RECORD_NAME",
    "ChapterOutcome",
    "FolderChapter",
    "FolderScan",
    "PlannedChapter",
    "Problem",
    "Progress",
    "UploadInterrupted",
    "UploadPlan",
    "UploadSummary",
    "find_project",
    "natural_key",
    "plan_upload",
    "scan_folder",
    "upload",
]
