"""BlocksWorld for LiTS."""
