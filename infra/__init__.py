"""Infrastructure shared by the apps (the reference cache), below every domain app."""
