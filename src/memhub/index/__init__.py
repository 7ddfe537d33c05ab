"""Index primitives shared by the store backends and retrieval: the tokenizer behind full-text search and the
approximate-nearest-neighbour vector index. No persistence and no policy: a backend decides what to index."""
