"""The knowledge graph of a user's memories: typed entity nodes, mention and relation edges, personalised PageRank."""
