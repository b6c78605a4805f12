"""Monitor actors: commands, the actor, its supervisor, one poll."""
