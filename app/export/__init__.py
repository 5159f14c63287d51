"""`toolscope export`: a session as Markdown, one self-contained HTML file, or the JSON of its
session view (`docs/export.md`). Markdown and HTML render the report model of `app.report`."""
