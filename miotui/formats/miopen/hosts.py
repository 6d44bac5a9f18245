"""The host name or rank tag in front of MIOpen's line prefix, for the status bar.

Why: a job on several nodes writes one log per rank, or one log with every rank's lines
tagged by its launcher; the status bar names the hosts a followed file holds so a user can
tell ``rank3.log`` is node07's.  Sampled once per piece read (one ``find``: cheap).
"""

from __future__ import annotations

import re
from typing import Optional

#: What may precede MIOpen's prefix on a line: a host name or a launcher's rank tag
#: (``node07 41523 MIOpen(HIP):``, pdsh's ``node07: ``, Open MPI's ``[1,3]<stderr>:``, srun's ``3: ``).
_LEAD_LABEL_RE = re.compile(r"^(?:(\[\d+,\d+\])(?:<std(?:out|err)>)?:?|([A-Za-z][\w.-]{0,62})(?::| +\d+)?|(\d{1,5}):)$")


def lead_label(lead: bytes) -> Optional[str]:
    """The host name or rank tag in the text before ``MIOpen`` on a line, if it is one."""
    text = lead.decode("ascii", "replace").strip().rstrip("|").strip()
    if not text:
        return None
    m = _LEAD_LABEL_RE.match(text)
    if m is None:
        return None
    return m.group(1) or m.group(2) or m.group(3)


def host_label(data: bytes) -> Optional[str]:
    """The label before the first MIOpen prefix of a piece of log text, if there is one."""
    i = data.find(b"MIOpen")
    if i <= 0:
        return None
    start = data.rfind(b"\n", 0, i) + 1
    if start == i or i - start > 80:
        return None
    return lead_label(data[start:i])
