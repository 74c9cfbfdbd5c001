"""Search: a memory's text analysed into index postings, and ranking over a user's postings."""
