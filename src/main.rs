fn main() -> std::process::ExitCode {
    uopfuzz::cli::main()
}
