# copy[nt_inline]: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
nopl (%rax, %rax)
cmpl $1, %edx
je 0xffffffff8111c1ea
cmpl $2, %edx
je 0xffffffff8111c229
movq (%rsi), %rax
movntiq %rax, (%rdi)
movq 8(%rsi), %rax
movntiq %rax, 8(%rdi)
movq 0x10(%rsi), %rax
movntiq %rax, 0x10(%rdi)
movq 0x18(%rsi), %rax
movntiq %rax, 0x18(%rdi)
movq 0x20(%rsi), %rax
movntiq %rax, 0x20(%rdi)
movq 0x28(%rsi), %rax
movntiq %rax, 0x28(%rdi)
movq 0x30(%rsi), %rax
movntiq %rax, 0x30(%rdi)
movq 0x38(%rsi), %rax
movntiq %rax, 0x38(%rdi)
retq
