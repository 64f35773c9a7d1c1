"""A WSGI entry point for end-to-end tests: the real app with the tag enricher."""

from api_support import TagEnricher

from newsquarry.api import create_app

app = create_app(enricher=TagEnricher())
