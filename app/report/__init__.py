"""The per-request route report: one model (`model`), rendered by the CLI text (`text`), the
inspect JSON (`json`) and the exports (`markdown`, `html`); the TUI inspector reads the same model.
`prices` says what a route's tokens cost."""
