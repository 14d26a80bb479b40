"""The command-line programs: one module per script of the original release (and two more),
run by the checkout's top-level script of the same name (`python run_squad.py ...`) and by the
installed package's `official-bert` program (`official-bert run_squad ...`, official_bert_cli.py).

Each module has `define_flags()`, which defines its absl flags, and `main(argv)`, which does its
work from them; official_bert.script_main.run_command runs the two. Importing a module defines
no flag: commands share flag names (--vocab_file, --output_dir) and absl keeps one set of flags
a process, so only the command that runs defines its own. This package imports none of them.
"""
