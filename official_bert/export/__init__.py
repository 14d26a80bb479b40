"""SavedModel and TF Hub exports."""
