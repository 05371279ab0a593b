"""What every benchmark and system shares: result rows and their tables (``report``), plots
(``plot``) and the progress bar of long runs (``progress``)."""
