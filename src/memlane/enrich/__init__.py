"""Write-time enrichment: entities, event time, category and intent, importance of each memory."""
