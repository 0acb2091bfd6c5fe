"""A turn's images and documents: those that reach the workflow with their bytes are stored
before anything else happens (`first_sight`)."""
