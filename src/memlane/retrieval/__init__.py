"""Read path: query terms, per-dimension candidates, fusion into explained hits."""
