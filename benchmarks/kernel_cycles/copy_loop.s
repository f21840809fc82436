# copy_loop: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
leaq -0x20(%rbp), %rdi
leaq 0x20(%rbx), %r13
movq %r12, %rsi
movq %rbx, %rax
movq %rdi, %rcx
subq %rbx, %rsi
andq $0xffffffffffffffe0, %rcx
addq %r13, %rcx
leaq (%rsi, %rax), %rdx
movq (%rax), %r8
movq 8(%rax), %r9
movq 0x10(%rax), %r10
movq 0x18(%rax), %r11
movntiq %r8, (%rdx)
movntiq %r9, 8(%rdx)
movntiq %r10, 0x10(%rdx)
movntiq %r11, 0x18(%rdx)
addq $0x20, %rax
cmpq %rcx, %rax
jne 0xffffffff81383e62
