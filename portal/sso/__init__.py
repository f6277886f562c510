"""Single sign-on: the OIDC backend (social-auth-app-django), the groups-claim mapping, and the password policy."""
