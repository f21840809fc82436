# tail_slow: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
movq %r15, %rdi
shlq $6, %rdi
addq 0x38c18a(%rip), %rdi
testl %ebx, %ebx
jne 0xffffffff81388005
movq 0x18(%rsp), %rdx
movq 0x20(%rsp), %rsi
movq %rdi, 0x28(%rsp)
callq 0xffffffff81387f40
nopl (%rax, %rax)
pushq %rbp
movq %rdi, %rbp
pushq %rbx
movq %rdx, %rbx
callq 0xffffffff81387ee0
nopl (%rax, %rax)
leaq 8(%rdi), %rax
shlq $0x3e, %rsi
movl $1, 0x34(%rdi)
movq $0, 0x38(%rdi)
movl $0xffffffff, 0x30(%rdi)
movq $0, 0x28(%rdi)
movq %rax, 8(%rdi)
movq $0, 0x20(%rdi)
movq $0, 0x18(%rdi)
movq %rsi, (%rdi)
movq %rax, 0x10(%rdi)
btsq $0xd, (%rdi)
movq %rdx, 8(%rdi)
movq $0, 0x10(%rdi)
retq
movl 0x60(%rbx), %eax
subl $1, %eax
cmpl $1, %eax
ja 0xffffffff81387f64
popq %rbx
popq %rbp
retq
movslq %r13d, %rdx
movq 0x28(%rsp), %rdi
movabsq $0xdead000000000400, %rax
shlq $6, %rdx
leaq 1(%r12), %rsi
addq %r12, %rdx
movq %rax, 0x18(%rdx)
movq %rsi, 8(%rdx)
movq $0, 0x28(%rdx)
movl $0, 0x34(%rdi)
cmpq %r15, 0x30(%rsp)
jne 0xffffffff8138801a
movq 0x38(%rsp), %rax
addq $1, %r15
addl $1, %r13d
cmpq %rax, %r15
jae 0xffffffff813881af
