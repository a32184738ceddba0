#!/usr/bin/env python3
"""uopfuzz's bridge to tinygrad 0.14.0 (the ground truth). Usage: tinygrad_oracle.py <command> [args].

Commands:
  alu   evaluate ALU/CAST/BITCAST cells with tinygrad's exec_alu (JSON lines on stdin/stdout; see alu_cmd.py)
"""
import sys, os

def main() -> int:
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip(), file=sys.stderr)
    return 2
  try:
    import tinygrad  # noqa: F401
  except ImportError as e:
    print(f"tinygrad_oracle: cannot import tinygrad ({e}); run the setup script or set UOPFUZZ_PYTHON", file=sys.stderr)
    return 3
  cmd, args = sys.argv[1], sys.argv[2:]
  if cmd == "alu":
    import alu_cmd
    return alu_cmd.main(args)
  print(f"tinygrad_oracle: unknown command {cmd!r}", file=sys.stderr)
  return 2

if __name__ == "__main__":
  sys.exit(main())
