"""Shape rules, grouped by op family. Each module registers its family's rules when imported;
``hlort.ir.shape_inference.SHAPE_RULES`` imports them on first use (the rarer families only
when a rule is missing from the common ones)."""
