"""Documents and notes as memories: stored whole with no session, embedded passage by passage."""
