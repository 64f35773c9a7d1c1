"""A WSGI entry point for end-to-end tests: the real app whose enricher crashes on a marked text."""

from api_support import CrashingEnricher

from newsquarry.api import create_app

app = create_app(enricher=CrashingEnricher())
