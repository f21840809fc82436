# copy[nt_call]: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
nopl (%rax, %rax)
cmpl $1, %edx
je 0xffffffff8111c1ea
cmpl $2, %edx
je 0xffffffff8111c229
movl $0x40, %edx
jmp 0xffffffff81383e20
endbr64
nopl (%rax, %rax)
pushq %r13
pushq %r12
movq %rdi, %r12
andl $7, %edi
pushq %rbp
movq %rdx, %rbp
pushq %rbx
movq %rsi, %rbx
jne 0xffffffff81383f3b
cmpq $0x1f, %rbp
jbe 0xffffffff81383ea1
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
andq $0xffffffffffffffe0, %rdi
andl $0x1f, %ebp
leaq 0x20(%rdi, %r12), %r12
leaq (%rdi, %r13), %rbx
cmpq $7, %rbp
jbe 0xffffffff81383ee6
cmpq $3, %rbp
ja 0xffffffff81383ef8
testq %rbp, %rbp
jne 0xffffffff81383f11
popq %rbx
popq %rbp
popq %r12
popq %r13
retq
