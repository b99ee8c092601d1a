"""Left behind by a half-removed install: the entry point names hlort_fake_ghost_files, gone."""
