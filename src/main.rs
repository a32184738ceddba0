fn main() {
    println!("uopfuzz");
}
