"""The `openai-sdk` dialect: the library-backed route through the official `openai` client.

It sends the `deepseek-chat` body (such routes declare tool_update `none`, so it never carries update
blocks or `defer_loading`) and maps the client's chunks and exceptions onto the stream contract.
"""
