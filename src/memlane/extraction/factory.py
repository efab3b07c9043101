"""Build the extractor and consolidator a ``Config`` names: offline rules, or an LLM when one is configured."""

from __future__ import annotations

from dataclasses import dataclass

from memlane.config import Config
from memlane.extraction.base import Extractor
from memlane.extraction.llm import LLMExtractor
from memlane.extraction.offline import RuleExtractor
from memlane.lifecycle.consolidate import Consolidator, LLMConsolidator, RuleConsolidator
from memlane.llm.base import ChatModel
from memlane.llm.usage import UsageCounter


@dataclass
class Extraction:
    """The extraction side of a ``Memory``: extractor, consolidator, and the chat model and counter if any."""

    extractor: Extractor
    consolidator: Consolidator
    chat: ChatModel | None = None
    usage: UsageCounter | None = None

    def close(self) -> None:
        """Release the chat client's connections, if it holds any."""
        close = getattr(self.chat, "close", None)
        if callable(close):
            close()


def make_extraction(config: Config) -> Extraction:
    """Offline rules without an LLM; with ``config.llm_provider`` the LLM extractor and consolidator.

    Nothing is sent anywhere until something is extracted.
    """
    if config.llm_provider is None:
        return Extraction(RuleExtractor(), RuleConsolidator())
    counter = UsageCounter()
    chat: ChatModel
    if config.llm_provider == "openai":
        from memlane.llm.openai import OpenAIChat

        assert config.llm_base_url is not None
        assert config.llm_model is not None
        chat = OpenAIChat(
            config.llm_base_url,
            config.llm_model,
            config.llm_api_key,
            timeout=config.llm_timeout,
            counter=counter,
        )
    else:
        from memlane.llm.bedrock import BedrockChat

        assert config.llm_model is not None
        chat = BedrockChat(config.llm_model, region=config.llm_region, timeout=config.llm_timeout, counter=counter)
    extractor = LLMExtractor(chat, batch_size=config.llm_batch_size, max_workers=config.llm_max_workers)
    return Extraction(extractor, LLMConsolidator(chat), chat, counter)
