"""Tests of the LangChain integration (groundwire-langchain)."""
