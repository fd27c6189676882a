"""Components: Policy proposes steps, Transition executes them, RewardModel scores them."""
