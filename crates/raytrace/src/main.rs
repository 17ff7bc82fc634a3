//! `sss-raytrace`: the parallel ray tracer; see the library docs for usage.

fn main() {
    std::process::exit(sss_raytrace::main());
}
