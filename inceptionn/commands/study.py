"""`inceptionn study`: the five papers' study (inceptionn.study, the study/ folder): every
experiment, docs/results.md and its figures."""


def add_arguments(ap) -> None:
    # Imported only when the study is the command (it loads torch).
    from ..study.command import add_arguments as study_arguments
    study_arguments(ap)


def run(args) -> int:
    from ..study.command import run as run_study
    return run_study(args)
