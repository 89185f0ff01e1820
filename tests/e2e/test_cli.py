"""The command line's contract: help, version, usage errors."""
import re


def test_version(herd):
    r = herd('version')
    assert r.returncode == 0
    assert re.fullmatch(r'herd \d+\.\d+\.\d+\n', r.stdout)
    assert herd('--version').stdout == r.stdout


def test_help_lists_commands(herd):
    r = herd('--help')
    assert r.returncode == 0
    assert 'Usage: herd <subcommand>' in r.stdout
    assert 'version' in r.stdout


def test_subcommand_help(herd):
    r = herd('version', '--help')
    assert r.returncode == 0
    assert r.stdout.startswith('Usage: herd version')


def test_unknown_command_is_one_line_exit_2(herd):
    r = herd('frobnicate')
    assert r.returncode == 2
    assert r.stdout == ''
    assert r.stderr == "herd: unknown subcommand 'frobnicate' (see 'herd --help')\n"


def test_no_command_is_usage_error(herd):
    r = herd()
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1


def test_unknown_flag_is_one_line_exit_2(herd):
    r = herd('version', '-bogus')
    assert r.returncode == 2
    assert r.stderr == "herd version: unknown flag -bogus (see 'herd version --help')\n"


def test_unexpected_argument(herd):
    r = herd('version', 'extra')
    assert r.returncode == 2
    assert "unexpected argument 'extra'" in r.stderr
