"""One module per group of verbs: each registers its arguments (standard library only) and runs them."""
