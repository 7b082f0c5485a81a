// The noalc-streak service; filled in by its issue.
