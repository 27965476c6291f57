// libsystemc calls sc_main() only from its own main(); mlusim programs, tests and Python
// modules have their own entry point, but libsystemc.so still needs the symbol resolved.
// Weak, so a program that defines sc_main keeps its own. SystemC declares it extern "C".
extern "C" __attribute__((weak)) int sc_main(int, char**) { return 0; }
