"""Language-model clients behind one ``ChatModel`` seam: OpenAI-compatible HTTP and AWS Bedrock, with usage counting."""

from memlane.llm.base import ChatMessage, ChatModel, ChatReply, Usage
from memlane.llm.bedrock import BedrockChat
from memlane.llm.openai import OpenAIChat
from memlane.llm.usage import CallRecord, Price, UsageCounter

__all__ = [
    "BedrockChat",
    "CallRecord",
    "ChatMessage",
    "ChatModel",
    "ChatReply",
    "OpenAIChat",
    "Price",
    "Usage",
    "UsageCounter",
]
