"""Analysis runs: one supervised task per run, cancellable, logged as it goes."""
