"""The `toolscope` commands (`docs/cli.md`), one module each, in the shape of Harlequin's and
`llm`'s: `add_parser(subparsers)` adds the command's parser and sets its handler,
`run(options, config)`, which returns the exit code; `config` is None when there is no config file
(every setting its default). `app.cli` builds the parser from these modules and dispatches.

Every command's module is imported to build the parser, for the chat too, whose first frame waits
for that: a module imports at its top only what its parser needs, and its handler the rest.

The exit codes, for every command: 0 done, 1 runtime error (a session that cannot be read, a failed
turn), 2 usage or config error, 130 interrupted. Expected failures print one localized line to
stderr, never a traceback.
"""

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
