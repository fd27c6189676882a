"""What LiTS knows of the servers it calls: their slots and pace, reply constraints, pooling and scoring without echo."""
